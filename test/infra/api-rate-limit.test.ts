import { Match } from 'aws-cdk-lib/assertions';
import { rateLimitedMessage, VIA_CLOUDFRONT_HEADER, VIEWER_ADDRESS_HEADER } from '../../infra/api-rate-limit';
import { ofType, synth } from './stack-template';

describe.each(['dev', 'prod'])('the %s stack', (stageName) => {
  it('has no WAF unless the stage asks for one', () => {
    const { resources } = synth(stageName);
    expect(ofType(resources, 'AWS::WAFv2::WebACL')).toEqual([]);
    expect(ofType(resources, 'AWS::WAFv2::WebACLAssociation')).toEqual([]);
  });

  it('with waf set, blocks an IP address over the rate with a 429 in the API error shape, on the API stage', () => {
    const { template, resources } = synth(stageName, { waf: { rateLimitPer5Minutes: 2000 } });
    template.resourceCountIs('AWS::WAFv2::WebACL', 1);
    const [aclId, acl] = ofType(resources, 'AWS::WAFv2::WebACL')[0]!;
    expect(acl.Properties).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    // Through CloudFront (its header carrying the stack's own token), by the viewer's address it adds; otherwise by the caller's own.
    const viaCloudFront = {
      ByteMatchStatement: {
        FieldToMatch: { SingleHeader: { Name: VIA_CLOUDFRONT_HEADER } },
        PositionalConstraint: 'EXACTLY',
        SearchString: { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] },
        TextTransformations: [{ Priority: 0, Type: 'NONE' }],
      },
    };
    const block = { Block: { CustomResponse: expect.objectContaining({ ResponseCode: 429, CustomResponseBodyKey: 'rate-limited' }) } };
    expect(acl.Properties.Rules).toEqual([
      expect.objectContaining({
        Statement: {
          RateBasedStatement: {
            Limit: 2000,
            EvaluationWindowSec: 300,
            AggregateKeyType: 'FORWARDED_IP',
            ForwardedIPConfig: { HeaderName: VIEWER_ADDRESS_HEADER, FallbackBehavior: 'MATCH' },
            ScopeDownStatement: viaCloudFront,
          },
        },
        Action: block,
      }),
      expect.objectContaining({
        Statement: { RateBasedStatement: { Limit: 2000, EvaluationWindowSec: 300, AggregateKeyType: 'IP', ScopeDownStatement: { NotStatement: { Statement: viaCloudFront } } } },
        Action: block,
      }),
    ]);
    const body = JSON.parse(acl.Properties.CustomResponseBodies['rate-limited'].Content);
    expect(body).toEqual({ message: rateLimitedMessage(2000), statusCode: 429, error: 'Too Many Requests' });
    expect(body.message).toContain('2000 requests in 5 minutes');

    const [stageId] = ofType(resources, 'AWS::ApiGateway::Stage')[0]!;
    template.hasResource('AWS::WAFv2::WebACLAssociation', {
      Properties: {
        WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] },
        ResourceArn: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.objectLike({ Ref: stageId })])]) }),
      },
      DependsOn: Match.arrayWith([stageId]),
    });
  });

  it('refuses a rate limit outside the range WAF accepts', () => {
    expect(() => synth(stageName, { waf: { rateLimitPer5Minutes: 5 } })).toThrow('waf.rateLimitPer5Minutes must be a whole number from 10 to 2000000000');
  });
});
